package launch

import (
	"crypto/sha256"
	"fmt"
	"strings"
)

// SecretSource says where a job's rendezvous secret came from.
type SecretSource string

const (
	SecretEnv  SecretSource = "GDRCHECK_SECRET"
	SecretFile SecretSource = "--secret-file"
	// SecretWeak is derived from the launcher's job id: anyone who can
	// read the job id (squeue, ps) can derive it. It keeps a stray
	// process of another job out, not an attacker.
	SecretWeak SecretSource = "job id (weak)"
)

// Secret is the job's rendezvous secret: GDRCHECK_SECRET, else the file's
// contents (file is nil when --secret-file was not given; surrounding
// white space is dropped), else one derived from the launcher's job id
// (SecretWeak). At least 16 bytes; none at all is an error saying how to
// give one.
func Secret(env map[string]string, file []byte, j Job) ([]byte, SecretSource, error) {
	if v := env["GDRCHECK_SECRET"]; v != "" {
		if len(v) < 16 {
			return nil, "", fmt.Errorf("GDRCHECK_SECRET has %d characters: want at least 16 (e.g. openssl rand -hex 32)", len(v))
		}
		return []byte(v), SecretEnv, nil
	}
	if file != nil {
		v := strings.TrimSpace(string(file))
		if len(v) < 16 {
			return nil, "", fmt.Errorf("--secret-file holds %d characters: want at least 16 (e.g. openssl rand -hex 32)", len(v))
		}
		return []byte(v), SecretFile, nil
	}
	if j.JobID != "" {
		sum := sha256.Sum256([]byte("gdrcheck weak rendezvous secret\x00" + string(j.Launcher) + "\x00" + j.JobID + "\x00" + j.Rendezvous))
		return sum[:], SecretWeak, nil
	}
	return nil, "", fmt.Errorf("%s: no rendezvous secret: set GDRCHECK_SECRET (the same on every rank, e.g. export GDRCHECK_SECRET=$(openssl rand -hex 32) before the launcher) or give --secret-file", j.Launcher)
}
