# cmake/install_etc.cmake: the install step's part that depends on the prefix
# given at install time (`cmake --install BUILD --prefix /usr`, which
# debian/rules uses on an existing build): /etc for the /usr prefix as
# GNUInstallDirs decides it, and the systemd unit with the real paths in it.
# Run by install(SCRIPT) from the top CMakeLists.txt, after CT_SRC was set.
# file(INSTALL) prefixes DESTDIR itself and records every file in the
# install manifest.

set(prefix "${CMAKE_INSTALL_PREFIX}")
if(prefix STREQUAL "/usr")
  set(sysconfdir "/etc")
elseif(prefix MATCHES "^/opt/")
  set(sysconfdir "/etc${prefix}")
else()
  set(sysconfdir "${prefix}/etc")
endif()
if(NOT CT_UNITDIR)
  set(CT_UNITDIR "${prefix}/lib/systemd/system")
endif()
set(SBINDIR "${prefix}/sbin")
set(SYSCONFDIR "${sysconfdir}")
set(DOCDIR "${prefix}/share/doc/cachet")

# The configuration: installed only where none exists, so a reinstall never
# overwrites an operator's file (nginx's `make install` does the same); the
# example beside the docs is always the current one.
if(EXISTS "$ENV{DESTDIR}${sysconfdir}/cachet/cachet.conf")
  message(STATUS "Keeping: $ENV{DESTDIR}${sysconfdir}/cachet/cachet.conf")
else()
  file(INSTALL DESTINATION "${sysconfdir}/cachet" TYPE FILE FILES "${CT_SRC}/conf/cachet.conf")
endif()

# The unit with this install's paths (a build tree knows none of them, so the
# same build installs to any prefix). Filled in under a name of its own per
# prefix and DESTDIR: two installs from one build at once (the install and
# package tests under ctest -j) must not copy each other's unit.
string(MD5 tag "${prefix}|$ENV{DESTDIR}")
set(unit "${CT_BUILD}/install-units/${tag}/cachet.service")
configure_file("${CT_SRC}/conf/cachet.service.in" "${unit}" @ONLY)
file(INSTALL DESTINATION "${CT_UNITDIR}" TYPE FILE FILES "${unit}")
