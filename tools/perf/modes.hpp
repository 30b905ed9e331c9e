#pragma once
// dpdat-perf's two ways to run, and what both do at the end.

#include "options.hpp"
#include "report.hpp"

namespace dpdat::perf {

// Client and server in one process (IAs o.ia_a and o.ia_b).
int run_local(const Options& o);
// One side of a cross-process run over o.vdev.
int run_remote(const Options& o);
// Prints the counters and writes --json / --csv.  Exit status.
int finish_run(const Options& o, const Run& r);

}  // namespace dpdat::perf
