// The failure checks of the libfabric test programs.  CHECK(cond, fmt, ...)
// prints "<program> <role>: <message> (line N)" on stderr and exits with 1;
// OK(call) checks that a call returned 0, naming the call and its
// fi_strerror.  The including file defines CHECK_PROGRAM (its name) before
// including this, and has `role` (the end it plays) and an int `ret` in scope.
#pragma once

#include <rdma/fi_errno.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(cond, ...)                               \
  do {                                                 \
    if (!(cond)) {                                     \
      fprintf(stderr, "%s %s: ", CHECK_PROGRAM, role); \
      fprintf(stderr, __VA_ARGS__);                    \
      fprintf(stderr, " (line %d)\n", __LINE__);       \
      exit(1);                                         \
    }                                                  \
  } while (0)
#define OK(call) CHECK((ret = (call)) == 0, "%s = %d (%s)", #call, ret, fi_strerror(-ret))
