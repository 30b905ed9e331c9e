#pragma once
// dat_core's link seam (dat_core/link.hpp) over DPDK: the EAL is started on
// the first open, the link is the built-in net_ring pair (ring=), a virtual
// device (vdev=) or an already probed ethdev (port=), set up as a Port (ARP,
// offloads, seeded receive loss), and the clock is the TSC at DPDK's
// calibrated rate once the EAL knows it.
//
// Linking the object library dpdat_link_dpdk into a shared library or a
// program installs this factory from a static initialiser (libdat.so.1 and
// the DAT 2.0 plug-in do); link_factory() is for code that installs it
// itself.

#include "link.hpp"

namespace dpdat::dpdk {

const dat::LinkFactory& link_factory();

}  // namespace dpdat::dpdk
