/*
 * dat/dat_registry.h -- dpdat uDAPL (DAT 1.2) public API: the provider side
 * of the DAT registry.
 *
 * In the specification, libdat is a registry that loads provider libraries
 * and forwards each call through a provider's dispatch table; providers use
 * this header to register themselves. In dpdat, libdat *is* the provider:
 * every DAT call is implemented directly, there is no dispatch table, and
 * dat_registry_add_provider()/dat_registry_remove_provider() (which take
 * that table) do not exist. What consumers need from the registry,
 * dat_registry_list_providers(), is declared in <dat/dat.h>.
 *
 * Kept here: the names of a provider library's entry points, for tools that
 * look them up in a shared object (dlsym), and their signatures.
 */
#ifndef DPDAT_DAT_REGISTRY_H
#define DPDAT_DAT_REGISTRY_H

#include <dat/udat.h>

#ifdef __cplusplus
extern "C" {
#endif

#define DAT_PROVIDER_INIT_FUNC_NAME dat_provider_init
#define DAT_PROVIDER_FINI_FUNC_NAME dat_provider_fini
#define DAT_PROVIDER_INIT_FUNC_STR "dat_provider_init"
#define DAT_PROVIDER_FINI_FUNC_STR "dat_provider_fini"

/* Called once when a registry loads a provider; instance_data is the provider's dat.conf argument
 * string. */
typedef void (*DAT_PROVIDER_INIT_FUNC)(IN const DAT_PROVIDER_INFO* provider_info,
                                       IN const char* instance_data);

/* Called once before a registry unloads a provider. */
typedef void (*DAT_PROVIDER_FINI_FUNC)(IN const DAT_PROVIDER_INFO* provider_info);

#ifdef __cplusplus
}
#endif

#endif /* DPDAT_DAT_REGISTRY_H */
