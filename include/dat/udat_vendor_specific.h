/*
 * dat/udat_vendor_specific.h -- dpdat uDAPL (DAT 1.2) public API.
 *
 * The specification reserves this header for a provider's own additions to
 * the uDAPL API. dpdat adds none beyond <dat/dat_vendor_specific.h>.
 */
#ifndef DPDAT_UDAT_VENDOR_SPECIFIC_H
#define DPDAT_UDAT_VENDOR_SPECIFIC_H

#include <dat/dat_vendor_specific.h>

#endif /* DPDAT_UDAT_VENDOR_SPECIFIC_H */
