# Installation layout and Debian packages (cpack -G DEB).
#
#   cmake --preset release && cmake --build --preset release
#   (cd build/release && cpack -G DEB)       # packages in build/release/packages/
#
# Components, one package each:
#   lib        libdpdat1        libdat.so.1, librsm.so.1
#   dev        libdpdat-dev     headers, the .so links, dat.pc and rsm.pc, the C example
#   common     dpdat-common     the commented /etc/dpdat.conf (a conffile), dpdat.conf(5)
#   tools      dpdat-tools      dpdat-perf, dpdat-perf-dat2, dpdat-info, dpdat-plot,
#                               dpdat-wiredump, dpdat-hostile and their manual pages
#   dapl2      dpdat-dapl2      the DAT 2.0 provider; its maintainer scripts register
#                               its lines in /etc/dat.conf and take them out on removal
#   libfabric  dpdat-libfabric  the libfabric provider, in libfabric's provider directory
#   verbs      dpdat-verbs      dpdat's own libibverbs/librdmacm, in DPDAT_PRIVATE_LIBDIR
#                               (a directory the loader does not search: no shadowing),
#                               and dpdat-run, which puts them first for one program
# A component with nothing installed makes no package.  Each package also gets, in
# /usr/share/doc/<package>/, a changelog.gz naming the version and commit it was built from;
# manual pages are installed gzip-compressed; the packages with libraries on the loader's
# path (libdpdat1, dpdat-dapl2) have a shlibs file and activate the ldconfig trigger.
# The Maintainer field is DPDAT_PACKAGE_CONTACT (a cache variable: whoever publishes the
# packages sets a real address).

# --- what the packages hold beyond the targets' own install rules ----------------------------
# rsm.pc, relocatable like dat.pc (dat_core/CMakeLists.txt computes the same variables).
if(TARGET rsm)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
    set(DAT_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
    set(DAT_PC_LIBDIR "${CMAKE_INSTALL_LIBDIR}")
  else()
    file(RELATIVE_PATH _pc_up "/_p/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/_p")
    string(REGEX REPLACE "/$" "" _pc_up "${_pc_up}")
    set(DAT_PC_PREFIX "\${pcfiledir}/${_pc_up}")
    set(DAT_PC_LIBDIR "\${prefix}/${CMAKE_INSTALL_LIBDIR}")
  endif()
  set(DAT_PC_INCLUDEDIR "\${prefix}/include")
  configure_file(${PROJECT_SOURCE_DIR}/cmake/rsm.pc.in ${PROJECT_BINARY_DIR}/rsm.pc @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/rsm.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig
          COMPONENT dev)
endif()
install(FILES ${PROJECT_SOURCE_DIR}/tests/api_c/udat_c_example.c
        DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/libdpdat-dev/examples COMPONENT dev)

# The configuration file goes to /etc when installed under /usr (packages, CPACK_SET_DESTDIR
# below), else to <prefix>/etc, so `cmake --install --prefix DIR` never writes to /etc.
# (file(INSTALL) puts $DESTDIR in front of the destination itself.)
install(CODE "
  if(CMAKE_INSTALL_PREFIX STREQUAL \"/usr\")
    set(_etc /etc)
  else()
    set(_etc \"\${CMAKE_INSTALL_PREFIX}/etc\")
  endif()
  file(INSTALL \"${PROJECT_SOURCE_DIR}/packaging/dpdat.conf\" DESTINATION \"\${_etc}\")
" COMPONENT common)
# Manual pages, compressed as Debian installs them (gzip -9n: no name or time stamp, so the
# same page gives the same bytes).  Editing a page re-runs the configuration that compresses it.
function(dpdat_install_man page section component)
  set(_src ${PROJECT_SOURCE_DIR}/man/${page})
  set(_gz ${PROJECT_BINARY_DIR}/man/${page}.gz)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${_src})
  file(MAKE_DIRECTORY ${PROJECT_BINARY_DIR}/man)
  execute_process(COMMAND gzip -9nc ${_src} OUTPUT_FILE ${_gz} RESULT_VARIABLE _rc)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "gzip of man/${page} failed")
  endif()
  install(FILES ${_gz} DESTINATION ${CMAKE_INSTALL_MANDIR}/man${section} COMPONENT ${component})
endfunction()

dpdat_install_man(dpdat.conf.5 5 common)

foreach(tool dpdat-perf dpdat-perf-dat2 dpdat-info dpdat-wiredump dpdat-hostile)
  if(TARGET ${tool})
    install(TARGETS ${tool} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT tools)
  endif()
  if(TARGET ${tool} AND EXISTS ${PROJECT_SOURCE_DIR}/man/${tool}.1)
    dpdat_install_man(${tool}.1 1 tools)
  endif()
endforeach()
install(PROGRAMS ${PROJECT_SOURCE_DIR}/tools/plot/dpdat-plot DESTINATION ${CMAKE_INSTALL_BINDIR}
        COMPONENT tools)
dpdat_install_man(dpdat-plot.1 1 tools)
if(TARGET dpdat_verbs)
  dpdat_install_man(dpdat-run.1 1 verbs)
endif()
if(TARGET daplodpdk)
  install(FILES ${PROJECT_SOURCE_DIR}/packaging/datconf-lines
          DESTINATION ${CMAKE_INSTALL_DATADIR}/dpdat-dapl2 RENAME dat.conf.lines COMPONENT dapl2)
endif()

# --- CPack -----------------------------------------------------------------------------------
# The version: the project's, plus the commit count and hash of the tree when it is a git
# checkout (monotonic along one branch, as Debian's version ordering needs).
set(DPDAT_PACKAGE_VERSION ${PROJECT_VERSION})
execute_process(COMMAND git -C ${PROJECT_SOURCE_DIR} rev-list --count HEAD
                OUTPUT_VARIABLE _count OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET
                RESULT_VARIABLE _rc1)
execute_process(COMMAND git -C ${PROJECT_SOURCE_DIR} rev-parse --short HEAD
                OUTPUT_VARIABLE _hash OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET
                RESULT_VARIABLE _rc2)
if(_rc1 EQUAL 0 AND _rc2 EQUAL 0 AND _count)
  set(DPDAT_PACKAGE_VERSION "${PROJECT_VERSION}+git${_count}.${_hash}")
endif()

# cpack (and `make install`) package what is built and do not rebuild the whole tree (tests,
# benchmarks) first: build, then package, as the commands above do.
set(CMAKE_SKIP_INSTALL_ALL_DEPENDENCY ON)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME dpdat)
set(CPACK_PACKAGE_VENDOR dpdat)
set(DPDAT_PACKAGE_CONTACT "dpdat maintainers <dpdat@localhost>" CACHE STRING
    "The Maintainer field of the Debian packages (name <address>)")
set(CPACK_PACKAGE_CONTACT "${DPDAT_PACKAGE_CONTACT}")
set(CPACK_PACKAGE_VERSION ${DPDAT_PACKAGE_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "userspace RDMA provider over DPDK (uDAPL, RSMAPI, DAT 2.0, libfabric)")
set(CPACK_PACKAGE_DIRECTORY ${PROJECT_BINARY_DIR}/packages)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_SET_DESTDIR ON)
set(CPACK_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_ENABLE_COMPONENT_DEPENDS ON)
# The tools and plug-ins link libdat/librsm from libdpdat1 (a sibling component): let
# dpkg-shlibdeps find them in the build tree; the dependency itself comes from the component
# dependencies below.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS
    ${PROJECT_BINARY_DIR}/dat_core ${PROJECT_BINARY_DIR}/rsm ${PROJECT_BINARY_DIR}/lib/verbs)

set(_pkgs lib dev common tools dapl2 libfabric verbs)
set(_name_lib libdpdat1)
set(_name_dev libdpdat-dev)
set(_name_common dpdat-common)
set(_name_tools dpdat-tools)
set(_name_dapl2 dpdat-dapl2)
set(_name_libfabric dpdat-libfabric)
set(_name_verbs dpdat-verbs)
set(_desc_lib "dpdat libraries: uDAPL 1.2 (libdat.so.1) and RSMAPI (librsm.so.1)")
set(_desc_dev "dpdat development files: DAT 1.2 and RSMAPI headers, pkg-config files, example")
set(_desc_common "dpdat configuration: the interface file /etc/dpdat.conf and its manual")
set(_desc_tools "dpdat tools: dpdat-perf, dpdat-info, dpdat-plot, dpdat-wiredump, dpdat-hostile")
set(_desc_dapl2 "dpdat DAT 2.0 provider for OFED's libdat2, registered in /etc/dat.conf")
set(_desc_libfabric "dpdat libfabric provider (fi_info -p dpdat)")
set(_desc_verbs "dpdat verbs and rdma_cm libraries, in a private directory")
set(CPACK_COMPONENT_DEV_DEPENDS lib)
set(CPACK_COMPONENT_LIB_DEPENDS common)
set(CPACK_COMPONENT_TOOLS_DEPENDS lib dapl2)
set(CPACK_COMPONENT_DAPL2_DEPENDS common)
set(CPACK_COMPONENT_LIBFABRIC_DEPENDS common)
set(CPACK_COMPONENT_VERBS_DEPENDS common)
set(CPACK_DEBIAN_COMMON_PACKAGE_ARCHITECTURE all)
set(CPACK_DEBIAN_COMMON_PACKAGE_SHLIBDEPS OFF)
set(CPACK_DEBIAN_DEV_PACKAGE_SHLIBDEPS OFF)
set(CPACK_DEBIAN_LIB_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_TOOLS_PACKAGE_DEPENDS "python3, gnuplot-nox | gnuplot")
set(CPACK_DEBIAN_DAPL2_PACKAGE_CONTROL_EXTRA
    ${PROJECT_BINARY_DIR}/packaging/dapl2/postinst ${PROJECT_BINARY_DIR}/packaging/dapl2/postrm
    ${PROJECT_BINARY_DIR}/packaging/dapl2/shlibs ${PROJECT_BINARY_DIR}/packaging/dapl2/triggers)
set(CPACK_DEBIAN_LIB_PACKAGE_CONTROL_EXTRA
    ${PROJECT_BINARY_DIR}/packaging/lib/shlibs ${PROJECT_BINARY_DIR}/packaging/lib/triggers)
set(CPACK_DEBIAN_DAPL2_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_DEBIAN_COMMON_PACKAGE_CONTROL_EXTRA ${PROJECT_BINARY_DIR}/packaging/common/conffiles)
file(MAKE_DIRECTORY ${PROJECT_BINARY_DIR}/packaging/dapl2 ${PROJECT_BINARY_DIR}/packaging/common
     ${PROJECT_BINARY_DIR}/packaging/lib)
configure_file(${PROJECT_SOURCE_DIR}/packaging/dapl2-postinst
               ${PROJECT_BINARY_DIR}/packaging/dapl2/postinst COPYONLY)
configure_file(${PROJECT_SOURCE_DIR}/packaging/dapl2-postrm
               ${PROJECT_BINARY_DIR}/packaging/dapl2/postrm COPYONLY)
file(WRITE ${PROJECT_BINARY_DIR}/packaging/common/conffiles "/etc/dpdat.conf\n")
# shlibs (what a package linking the library depends on: this package, this version or
# later) and the ldconfig trigger (dpkg runs ldconfig once, after all packages are
# unpacked).  CPack 3.25 makes a shlibs file only for all packages at once, which would
# also claim libibverbs.so.1 and librdmacm.so.1 for dpdat-verbs.
set(_shlibs_lib "")
foreach(t dat rsm)
  if(TARGET ${t})
    get_target_property(_so ${t} SOVERSION)
    string(APPEND _shlibs_lib "lib${t} ${_so} libdpdat1 (>= ${DPDAT_PACKAGE_VERSION})\n")
  endif()
endforeach()
file(WRITE ${PROJECT_BINARY_DIR}/packaging/lib/shlibs "${_shlibs_lib}")
set(_shlibs_dapl2 "")
if(TARGET daplodpdk)
  get_target_property(_so daplodpdk SOVERSION)
  set(_shlibs_dapl2 "libdaplodpdk ${_so} dpdat-dapl2 (>= ${DPDAT_PACKAGE_VERSION})\n")
endif()
file(WRITE ${PROJECT_BINARY_DIR}/packaging/dapl2/shlibs "${_shlibs_dapl2}")
foreach(c lib dapl2)
  file(WRITE ${PROJECT_BINARY_DIR}/packaging/${c}/triggers "activate-noawait ldconfig\n")
endforeach()

# One changelog entry: this build's version and commit, dated with the commit (or the
# configuration time outside git), as Debian's changelog format has it.
set(_when "")
execute_process(COMMAND git -C ${PROJECT_SOURCE_DIR} log -1 --format=%aD
                OUTPUT_VARIABLE _when OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(NOT _when)
  string(TIMESTAMP _when "%a, %d %b %Y %H:%M:%S +0000" UTC)
endif()
set(_what "Built from the source tree as it was configured.")
if(_hash)
  set(_what "Built from git commit ${_hash}.")
endif()
file(WRITE ${PROJECT_BINARY_DIR}/packaging/changelog
     "dpdat (${DPDAT_PACKAGE_VERSION}) unstable; urgency=medium\n\n  * ${_what}\n\n"
     " -- ${DPDAT_PACKAGE_CONTACT}  ${_when}\n")
execute_process(COMMAND gzip -9nf ${PROJECT_BINARY_DIR}/packaging/changelog RESULT_VARIABLE _rc)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "gzip of the packages' changelog failed")
endif()

# Only components something installs into (the verbs one appears with its libraries).
get_cmake_property(_have COMPONENTS)
set(CPACK_COMPONENTS_ALL "")
foreach(c ${_pkgs})
  if(c IN_LIST _have)
    list(APPEND CPACK_COMPONENTS_ALL ${c})
    string(TOUPPER ${c} C)
    set(CPACK_DEBIAN_${C}_PACKAGE_NAME ${_name_${c}})
    set(CPACK_COMPONENT_${C}_DESCRIPTION "${_desc_${c}}")
    # Only in the package (a component's own installation), not in `cmake --install`.
    install(FILES ${PROJECT_BINARY_DIR}/packaging/changelog.gz
            DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/${_name_${c}} COMPONENT ${c}
            EXCLUDE_FROM_ALL)
  endif()
endforeach()

include(CPack)
