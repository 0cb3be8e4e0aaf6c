#!/usr/bin/env bash
# Environment probe of a lent GPU machine: what the checks and benchmarks
# will meet there (modules, IOMMU, limits, NVLink, libraries, tools).
set -u
OUT=${OUT:-out}
mkdir -p "$OUT"
{
  echo "== uname"; uname -a
  echo "== modules"; lsmod 2>/dev/null | grep -E "nvidia|mlx|ib_|rdma|peer" || cat /proc/modules | grep -E "nvidia|mlx|ib_|peer"
  echo "== /proc/driver/nvidia/version"; cat /proc/driver/nvidia/version
  echo "== cmdline"; cat /proc/cmdline
  echo "== iommu"; ls /sys/class/iommu /sys/kernel/iommu_groups 2>&1 | head; for g in /sys/kernel/iommu_groups/*/type; do echo "$g $(cat $g)"; done 2>/dev/null | head
  echo "== infiniband"; ls -la /sys/class/infiniband 2>&1
  echo "== ulimit"; ulimit -a
  echo "== limits"; cat /proc/self/limits
  echo "== nvlink"; nvidia-smi nvlink -s 2>&1 | head -30; nvidia-smi nvlink --status 2>&1 | head -5
  echo "== p2p"; nvidia-smi topo -p2p r 2>&1 | head
  echo "== libs"; ldconfig -p | grep -E "libcudart|libnccl|libnvidia-ml|libcuda\.so" ; ls /usr/local/cuda/lib64/libcudart* 2>&1
  echo "== tools"; which compute-sanitizer nvcc mpirun python3; compute-sanitizer --version 2>&1 | head -2
  echo "== dmesg"; dmesg 2>&1 | tail -3
  echo "== torch"; python3 -c 'import torch; print(torch.__version__, torch.cuda.device_count(), torch.cuda.get_device_name(0))'
  echo "== env"; env | grep -E "^(NCCL|CUDA|LD_)" 
  echo "== fabricmanager"; systemctl is-active nvidia-fabricmanager 2>&1
  echo "== nvidia params"; cat /proc/driver/nvidia/params | head -40
  echo "== pci config size"; for d in /sys/bus/pci/devices/*; do echo "$d $(cat $d/class) $(head -c 4096 $d/config | wc -c)"; done
} > "$OUT/probe.txt" 2>&1
tail -5 "$OUT/probe.txt"
