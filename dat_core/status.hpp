#pragma once
// The result of every dat_core operation: a DAT return type and subtype by
// NAME.  The numeric encoding differs between DAT 1.2 and DAT 2.0 (the
// subtype enumerations are numbered differently), so each front end — the
// uDAPL 1.2 C API and the DAT 2.0 plug-in — maps these names to its own
// header's constants in exactly one place (X-macros below: the enumerator
// `NAME` corresponds to `DAT_NAME`).

#include <cstdint>

namespace dpdat::dat {

#define DPDAT_RETURN_TYPES(X) \
  X(SUCCESS)                  \
  X(ABORT)                    \
  X(CONN_QUAL_IN_USE)         \
  X(INSUFFICIENT_RESOURCES)   \
  X(INTERNAL_ERROR)           \
  X(INVALID_HANDLE)           \
  X(INVALID_PARAMETER)        \
  X(INVALID_STATE)            \
  X(LENGTH_ERROR)             \
  X(MODEL_NOT_SUPPORTED)      \
  X(PROVIDER_NOT_FOUND)       \
  X(PRIVILEGES_VIOLATION)     \
  X(PROTECTION_VIOLATION)     \
  X(QUEUE_EMPTY)              \
  X(QUEUE_FULL)               \
  X(TIMEOUT_EXPIRED)          \
  X(INVALID_ADDRESS)          \
  X(INTERRUPTED_CALL)         \
  X(NOT_IMPLEMENTED)

// Only subtypes that exist in both DAT 1.2 and DAT 2.0.
#define DPDAT_RETURN_SUBTYPES(X)      \
  X(NO_SUBTYPE)                       \
  X(RESOURCE_MEMORY)                  \
  X(RESOURCE_DEVICE)                  \
  X(RESOURCE_TEP)                     \
  X(RESOURCE_TEVD)                    \
  X(RESOURCE_PROTECTION_DOMAIN)       \
  X(RESOURCE_MEMORY_REGION)           \
  X(RESOURCE_SRQ)                     \
  X(INVALID_HANDLE_IA)                \
  X(INVALID_HANDLE_EP)                \
  X(INVALID_HANDLE_LMR)               \
  X(INVALID_HANDLE_RMR)               \
  X(INVALID_HANDLE_PZ)                \
  X(INVALID_HANDLE_PSP)               \
  X(INVALID_HANDLE_RSP)               \
  X(INVALID_HANDLE_CR)                \
  X(INVALID_HANDLE_CNO)               \
  X(INVALID_HANDLE_EVD_CR)            \
  X(INVALID_HANDLE_EVD_REQUEST)       \
  X(INVALID_HANDLE_EVD_RECV)          \
  X(INVALID_HANDLE_EVD_CONN)          \
  X(INVALID_HANDLE_EVD_ASYNC)         \
  X(INVALID_HANDLE_SRQ)               \
  X(INVALID_ARG1)                     \
  X(INVALID_ARG2)                     \
  X(INVALID_ARG3)                     \
  X(INVALID_ARG4)                     \
  X(INVALID_ARG5)                     \
  X(INVALID_ARG6)                     \
  X(INVALID_ARG7)                     \
  X(INVALID_ARG8)                     \
  X(INVALID_ARG9)                     \
  X(INVALID_STATE_EP_UNCONNECTED)     \
  X(INVALID_STATE_EP_ACTCONNPENDING)  \
  X(INVALID_STATE_EP_PASSCONNPENDING) \
  X(INVALID_STATE_EP_TENTCONNPENDING) \
  X(INVALID_STATE_EP_CONNECTED)       \
  X(INVALID_STATE_EP_DISCONNECTED)    \
  X(INVALID_STATE_EP_RESERVED)        \
  X(INVALID_STATE_EP_DISCPENDING)     \
  X(INVALID_STATE_EP_NOTREADY)        \
  X(INVALID_STATE_CNO_IN_USE)         \
  X(INVALID_STATE_EVD_ENABLED)        \
  X(INVALID_STATE_EVD_DISABLED)       \
  X(INVALID_STATE_EVD_WAITABLE)       \
  X(INVALID_STATE_EVD_UNWAITABLE)     \
  X(INVALID_STATE_EVD_IN_USE)         \
  X(INVALID_STATE_EVD_WAITER)         \
  X(INVALID_STATE_IA_IN_USE)          \
  X(INVALID_STATE_LMR_IN_USE)         \
  X(INVALID_STATE_PZ_IN_USE)          \
  X(INVALID_STATE_SRQ_IN_USE)         \
  X(PROTECTION_READ)                  \
  X(PROTECTION_WRITE)                 \
  X(INVALID_ADDRESS_UNSUPPORTED)      \
  X(INVALID_ADDRESS_UNREACHABLE)      \
  X(INVALID_ADDRESS_MALFORMED)

#define DPDAT_ENUMERATOR(n) n,
enum class Type : uint8_t { DPDAT_RETURN_TYPES(DPDAT_ENUMERATOR) };
enum class Sub : uint8_t { DPDAT_RETURN_SUBTYPES(DPDAT_ENUMERATOR) };
#undef DPDAT_ENUMERATOR

struct [[nodiscard]] Status {
  Type type = Type::SUCCESS;
  Sub sub = Sub::NO_SUBTYPE;
  bool ok() const { return type == Type::SUCCESS; }
};

inline constexpr Status kOk{};
inline Status fail(Type t, Sub s = Sub::NO_SUBTYPE) { return Status{t, s}; }

}  // namespace dpdat::dat
