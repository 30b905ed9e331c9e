#pragma once
// dpdat-perf --soak: the client's long run (the server serves its rounds as
// any other's, and accepts the churned connections).

#include "dat_side.hpp"
#include "oob.hpp"
#include "options.hpp"
#include "report.hpp"
#include "runs.hpp"

namespace dpdat::perf {

// Until o.soak seconds have passed: a WRITE, a READ and a SEND round over
// the -q EPs (-n messages of the one size per EP each), each with new data
// and verified after it (WRITE, SEND: the peer's landing slices read back;
// READ: the slices read compared with the pattern the server wrote), while
// o.churn connections churn beside them (ClientChurn).  Every o.interval
// seconds one line "soak ..." (header "soak  #  ..."): the interval's
// goodput overall and per operation, the rounds and churn cycles done, and
// both processes' resident memory.  False (reported on stderr) on a
// mismatch or any error; on success the run's totals are in run->counters
// ("soak.*").
bool soak_client(Side& s, tools::Oob& oob, const Layout& L, const DAT_RMR_TRIPLET& peer,
                 const Options& o, Run* run);

}  // namespace dpdat::perf
