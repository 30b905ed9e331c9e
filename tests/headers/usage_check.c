/*
 * Compiled (never run) as C99 and C11 with -Werror: the public macros expand
 * to valid, warning-free C where a program uses them.
 */
#include <dat/dat_registry.h>
#include <dat/udat.h>

int dpdat_usage_check(void);

int dpdat_usage_check(void) {
  DAT_TIMEOUT timeout = DAT_TIMEOUT_INFINITE;
  DAT_HANDLE none = DAT_HANDLE_NULL;
  DAT_OS_WAIT_PROXY_AGENT agent = DAT_OS_WAIT_PROXY_AGENT_NULL;
  DAT_EVD_HANDLE exists = DAT_EVD_ASYNC_EXISTS;
  DAT_EVD_HANDLE async_evd = DAT_HANDLE_NULL;
  DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
  DAT_RETURN ret = DAT_CLASS_ERROR | DAT_INVALID_HANDLE | DAT_INVALID_HANDLE_EP;
  DAT_COUNT counts = DAT_VALUE_UNKNOWN + DAT_WATERMARK_INFINITE + DAT_HW_DEFAULT;
  DAT_IA_ATTR_MASK ia_mask = DAT_IA_FIELD_ALL;
  DAT_EP_PARAM_MASK ep_mask = DAT_EP_FIELD_ALL;
  DAT_PROVIDER_ATTR_MASK provider_mask = DAT_PROVIDER_FIELD_ALL;
  char cookie[DAT_LMR_COOKIE_SIZE] = {0};
  DAT_REGION_DESCRIPTION region;
  DAT_PROVIDER_ATTR provider_attr;
  DAT_PROVIDER_INIT_FUNC init = 0;
  region.for_shared_memory.shared_memory_id = &cookie;
  region.for_shared_memory.virtual_address = cookie;
  (void)provider_attr;
  (void)init;
  (void)region;
  if (dat_ia_open("dpdat0", 8, &async_evd, &ia) != DAT_SUCCESS) {
    return DAT_GET_TYPE(ret) == DAT_INVALID_HANDLE && DAT_GET_SUBTYPE(ret) == DAT_INVALID_HANDLE_EP;
  }
  return timeout != 0 && none == NULL && agent.proxy_agent_func == NULL && exists != NULL &&
         counts < 0 && ia_mask != 0 && ep_mask != 0 && provider_mask != 0 && !DAT_IS_WARNING(ret);
}
