#pragma once
// The pause of every spin-wait (engine loops, dat_core's spin locks): tells
// the CPU this is a spin loop, so the sibling hyper-thread gets the core and
// leaving the loop costs no memory-order mis-speculation.

namespace dpdat::rc {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

}  // namespace dpdat::rc
