package gatewayproc

import "syscall"

// sysProcAttr has the kernel send the gateway SIGTERM should the process
// that started it die first (a test binary killed by its timeout), so no
// gateway outlives its test or tool, and it still ends its shells.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}
