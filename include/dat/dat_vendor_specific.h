/*
 * dat/dat_vendor_specific.h -- dpdat uDAPL (DAT 1.2) public API.
 *
 * The specification reserves this header for a provider's own additions to
 * the common (uDAPL and kDAPL) API. dpdat adds none: everything it offers
 * is standard DAT 1.2 and is declared in <dat/dat.h> and <dat/udat.h>.
 */
#ifndef DPDAT_DAT_VENDOR_SPECIFIC_H
#define DPDAT_DAT_VENDOR_SPECIFIC_H

/* Identifies these headers to programs that want to know whose they are. */
#define DAT_VENDOR_DPDAT 1

#endif /* DPDAT_DAT_VENDOR_SPECIFIC_H */
