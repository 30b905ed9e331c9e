# Install directories, set before the targets' install rules are read.
#
# On Debian the libraries go to the multiarch directory (lib/<triplet>), whatever the
# prefix, as Debian's own CMake builds pass it: the packages then follow Debian's layout
# and libfabric's default provider directory (<libdir>/libfabric) is the system's.
# An explicit -DCMAKE_INSTALL_LIBDIR other than plain "lib" is kept.
if(EXISTS /etc/debian_version AND (NOT DEFINED CMAKE_INSTALL_LIBDIR OR CMAKE_INSTALL_LIBDIR STREQUAL "lib"))
  find_program(DPKG_ARCHITECTURE dpkg-architecture)
  if(DPKG_ARCHITECTURE)
    execute_process(COMMAND ${DPKG_ARCHITECTURE} -qDEB_HOST_MULTIARCH
                    OUTPUT_VARIABLE _multiarch OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    if(_multiarch)
      set(CMAKE_INSTALL_LIBDIR "lib/${_multiarch}" CACHE PATH "Object code libraries (LIBDIR)"
          FORCE)
    endif()
  endif()
endif()
include(GNUInstallDirs)

# dpdat's own libibverbs.so.1 / librdmacm.so.1 go here: a directory the dynamic loader does
# not search, so they never shadow rdma-core's; programs put it in front with
# LD_LIBRARY_PATH. Their install rules use COMPONENT verbs (cmake/packaging.cmake).
set(DPDAT_PRIVATE_LIBDIR "${CMAKE_INSTALL_LIBDIR}/dpdat")
