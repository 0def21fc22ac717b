#include "CLuaSandbox.h"

#include <signal.h>
#include <sys/prctl.h>

int sbx_die_with_parent(void) { return prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0); }
