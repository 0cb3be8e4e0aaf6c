package cli

import (
	"context"

	"github.com/gdrcheck/gdrcheck/internal/collect/libs"
)

// cudaState loads the CUDA runtime and asks its version.
func cudaState(ctx context.Context) LibraryState { return LibraryState(libs.CUDARuntime(ctx)) }

// ncclState loads NCCL and asks its version.
func ncclState() LibraryState { return LibraryState(libs.NCCL()) }
