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
#                               (a directory the loader does not search: no shadowing)
# A component with nothing installed makes no package.

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
install(FILES ${PROJECT_SOURCE_DIR}/man/dpdat.conf.5 DESTINATION ${CMAKE_INSTALL_MANDIR}/man5
        COMPONENT common)

foreach(tool dpdat-perf dpdat-perf-dat2 dpdat-info dpdat-wiredump dpdat-hostile)
  if(TARGET ${tool})
    install(TARGETS ${tool} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT tools)
  endif()
  if(TARGET ${tool} AND EXISTS ${PROJECT_SOURCE_DIR}/man/${tool}.1)
    install(FILES ${PROJECT_SOURCE_DIR}/man/${tool}.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1
            COMPONENT tools)
  endif()
endforeach()
install(PROGRAMS ${PROJECT_SOURCE_DIR}/tools/plot/dpdat-plot DESTINATION ${CMAKE_INSTALL_BINDIR}
        COMPONENT tools)
install(FILES ${PROJECT_SOURCE_DIR}/man/dpdat-plot.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1
        COMPONENT tools)
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
set(CPACK_PACKAGE_CONTACT "dpdat maintainers <dpdat@localhost>")
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
    ${PROJECT_BINARY_DIR}/dat_core ${PROJECT_BINARY_DIR}/rsm)

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
set(CPACK_DEBIAN_LIB_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_TOOLS_PACKAGE_DEPENDS "python3, gnuplot-nox | gnuplot")
set(CPACK_DEBIAN_DAPL2_PACKAGE_CONTROL_EXTRA
    ${PROJECT_BINARY_DIR}/packaging/dapl2/postinst ${PROJECT_BINARY_DIR}/packaging/dapl2/postrm)
set(CPACK_DEBIAN_DAPL2_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_DEBIAN_COMMON_PACKAGE_CONTROL_EXTRA ${PROJECT_BINARY_DIR}/packaging/common/conffiles)
file(MAKE_DIRECTORY ${PROJECT_BINARY_DIR}/packaging/dapl2 ${PROJECT_BINARY_DIR}/packaging/common)
configure_file(${PROJECT_SOURCE_DIR}/packaging/dapl2-postinst
               ${PROJECT_BINARY_DIR}/packaging/dapl2/postinst COPYONLY)
configure_file(${PROJECT_SOURCE_DIR}/packaging/dapl2-postrm
               ${PROJECT_BINARY_DIR}/packaging/dapl2/postrm COPYONLY)
file(WRITE ${PROJECT_BINARY_DIR}/packaging/common/conffiles "/etc/dpdat.conf\n")

# Only components something installs into (the verbs one appears with its libraries).
get_cmake_property(_have COMPONENTS)
set(CPACK_COMPONENTS_ALL "")
foreach(c ${_pkgs})
  if(c IN_LIST _have)
    list(APPEND CPACK_COMPONENTS_ALL ${c})
    string(TOUPPER ${c} C)
    set(CPACK_DEBIAN_${C}_PACKAGE_NAME ${_name_${c}})
    set(CPACK_COMPONENT_${C}_DESCRIPTION "${_desc_${c}}")
  endif()
endforeach()

include(CPack)
