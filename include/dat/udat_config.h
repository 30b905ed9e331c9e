/*
 * dat/udat_config.h -- dpdat uDAPL (DAT 1.2) public API.
 *
 * Which DAT version these headers describe, and the thread-safety level a
 * consumer asks for when dat_ia_open() expands to dat_ia_openv().
 */
#ifndef DPDAT_UDAT_CONFIG_H
#define DPDAT_UDAT_CONFIG_H

/* DAT 1.2 (the Debian dat2 headers say 2.0 here). */
#define DAT_VERSION_MAJOR 1
#define DAT_VERSION_MINOR 2

/*
 * The specification lets a project choose the thread-safety it requests by
 * defining DAT_THREADSAFE (to DAT_TRUE or DAT_FALSE) before including any DAT
 * header, and says the official headers default it to DAT_TRUE. The reference
 * implementations forced DAT_FALSE; dpdat keeps the specified default. libdat
 * is thread-safe whichever value a program passes: it accepts both.
 */
#ifndef DAT_THREADSAFE
#define DAT_THREADSAFE DAT_TRUE
#endif

#endif /* DPDAT_UDAT_CONFIG_H */
