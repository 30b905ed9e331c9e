/* A constant's name and value, as tabulated by ours_values.c and dat2_values.c. */
#ifndef DPDAT_TESTS_HEADERS_NAMED_VALUE_H
#define DPDAT_TESTS_HEADERS_NAMED_VALUE_H

#ifdef __cplusplus
extern "C" {
#endif

typedef struct dpdat_named_value {
  const char* name;
  long long value;
} dpdat_named_value;

/* Constants DAT 1.2 shares with DAT 2.0 (shared_constants.def), from include/dat. */
extern const dpdat_named_value dpdat_ours_shared[];
extern const int dpdat_ours_shared_count;
/* The same list from /usr/include/dat2. */
extern const dpdat_named_value dpdat_dat2_shared[];
extern const int dpdat_dat2_shared_count;

/* Names both versions define with different values (differing_constants.def). */
extern const dpdat_named_value dpdat_ours_differing[];
extern const dpdat_named_value dpdat_dat2_differing[];
extern const int dpdat_differing_count;

#ifdef __cplusplus
}
#endif

#endif /* DPDAT_TESTS_HEADERS_NAMED_VALUE_H */
