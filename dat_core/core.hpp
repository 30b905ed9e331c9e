#pragma once
// dat_core: the DAT objects (IA, PZ, EVD, CNO, EP, PSP/RSP/CR, LMR, RMR) over
// one dpdat interface (link + memory tables + RC engine + connection
// manager).  The uDAPL 1.2 C API (api/) and the DAT 2.0 plug-in are thin
// fronts over these objects; they convert their own structs and map Status
// to their DAT_RETURN encoding.
//
// Threading: one execution model for every front.
// - The data path (posting a work request, dequeuing or waiting for an
//   event) takes no interface-wide lock.  The engine of an interface is
//   driven by whoever holds its engine token (Iface::token, spin_lock.hpp),
//   which the data path only ever tries: a consumer that gets it posts into
//   the queue pair and progresses inline on its own thread; one that does not
//   hands its work request to the holder through a lock-free ring
//   (Iface::handoff) and returns.  Completions reach consumers through each
//   EVD's event ring (event_queue.hpp), which the token holder fills.
// - The control path (CM messages and timers, creating / modifying / freeing
//   objects) holds the interface mutex `Iface::mu` and, while it touches
//   objects the data path reads, the token too: IfaceLock takes both.  So a
//   field the data path reads is written only under both (readers hold
//   either); one the data path writes under the token alone is read under
//   the token (or is atomic).
// - Passive-side progress is a policy per interface (IfaceConfig::progress):
//   `busy` and `adaptive` run a progress thread of the interface's own
//   (progress.cpp); `inline` runs none.  A consumer that polls or waits
//   drives the interface itself in every mode, and an adaptive thread steps
//   aside while it does.
//
// Handles: every object starts with one pointer-sized word reserved for the
// DAT 2.0 provider pointer (libdat2 dispatches through a handle's first
// word), then its type tag.  Live handles are kept in a registry, so a stale
// or foreign handle is reported as DAT_INVALID_HANDLE instead of being
// dereferenced.

#include "iface.hpp"    // IWYU pragma: export
#include "objects.hpp"  // IWYU pragma: export
