/* The same lists evaluated against Debian's DAT 2.0 headers (/usr/include/dat2). */
#include <dat2/udat.h>

#include "named_value.h"

#define DPDAT_X(name) {#name, (long long)(name)},
const dpdat_named_value dpdat_dat2_shared[] = {
#include "shared_constants.def"
};
const dpdat_named_value dpdat_dat2_differing[] = {
#include "differing_constants.def"
};
#undef DPDAT_X

const int dpdat_dat2_shared_count = (int)(sizeof dpdat_dat2_shared / sizeof dpdat_dat2_shared[0]);
