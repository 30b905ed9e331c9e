#pragma once
// How dpdat-perf reaches the DAT 2.0 side (dat_api.hpp): the uDAPL 1.2
// program starts dpdat-perf-dat2 for the atomics; dpdat-perf-dat2 points
// libdat2 at dpdat's plug-in through a dat.conf of its own (DAT_OVERRIDE),
// as OFED's dtestx is pointed.

#include <string>

#include "options.hpp"

namespace dpdat::perf {

// Replaces this process with dpdat-perf-dat2 (next to this program, else on
// PATH) with the same arguments.  Returns only on failure: the exit status.
int exec_dat2(char** argv);

// Unless the user set DAT_OVERRIDE: writes a dat.conf naming the IAs of this
// run (one process: --ia and --peer-ia, configured from DPDAT_IA_<NAME> or
// the built-in in-process definitions; across processes: "perf" from --vdev,
// --ip, ...), each an entry for dpdat's plug-in, and sets DAT_OVERRIDE to it
// (which libdat2 reads when it is loaded: main() starts itself again).
// *path is the file written ("" if none was).
bool dat2_registry(const Options& o, std::string* path, std::string* err);

// The dpdat configuration string of the cross-process IA "perf".
std::string ia_config(const Options& o);

}  // namespace dpdat::perf
