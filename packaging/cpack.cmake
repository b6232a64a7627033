# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# A Debian package of both plugins, libcxi, the tools, headers and man pages:
# `cmake -DCMAKE_INSTALL_PREFIX=/usr ...`, build, then `cpack` in the build directory
# (scripts/package.sh does all three) gives softnic_<version>_<arch>.deb.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME softnic)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "libfabric providers cxi (Slingshot) and usnic in software")
set(CPACK_PACKAGE_DESCRIPTION
    "softnic puts the cxi and usnic libfabric providers in software, as plugins for the \
stock libfabric: shared memory within a host, UDP between hosts.")
set(CPACK_PACKAGE_CONTACT "softnic maintainers <maintainers@softnic.invalid>")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_RESOURCE_FILE_LICENSE ${CMAKE_SOURCE_DIR}/LICENSE)
set(CPACK_DEBIAN_PACKAGE_SECTION net)
# The libraries the plugins and tools link (libfabric, libnl, libyaml) come from
# dpkg-shlibdeps.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
include(CPack)
