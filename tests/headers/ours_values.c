/* The shared and differing constant lists, evaluated against include/dat (DAT 1.2). */
#include <dat/udat.h>

#include "named_value.h"

#define DPDAT_X(name) {#name, (long long)(name)},
const dpdat_named_value dpdat_ours_shared[] = {
#include "shared_constants.def"
};
const dpdat_named_value dpdat_ours_differing[] = {
#include "differing_constants.def"
};
#undef DPDAT_X

const int dpdat_ours_shared_count = (int)(sizeof dpdat_ours_shared / sizeof dpdat_ours_shared[0]);
const int dpdat_differing_count =
    (int)(sizeof dpdat_ours_differing / sizeof dpdat_ours_differing[0]);
