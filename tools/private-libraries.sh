#!/usr/bin/env bash
# Builds the project's own libcurl (HTTP and HTTPS only) or libxml2 (without ICU) from Debian's
# source package, its security patches included, with OpenSSL and zlib from Debian, into the
# file named by its second argument (docs/ARCHITECTURE.md, "The project's libcurl and libxml2"):
#   tools/private-libraries.sh curl|libxml2 OUTPUT BUILD-FOLDER
# Debian's libcurl brings 30 libraries (Kerberos, LDAP, SSH, RTMP with GnuTLS) that only cost
# each process 2.5 ms of CPU and 4 MiB to load, and Debian's libxml2 brings ICU, 0.8 ms more at
# a script's first page. The machine's apt source lists are read as deb-src into the build
# folder, so its apt configuration is left as it is; apt checks the files it fetches against
# the signed index, so dpkg-source needs no keyring. About 50 s for both, once.
set -euo pipefail
package=${1:-} output=$(realpath -m "${2:-.}") sources=$(realpath -m "${3:-.}")/debian-sources

case "$package" in
  curl)
    features=(--with-openssl --with-zlib --with-ca-bundle=/etc/ssl/certs/ca-certificates.crt --with-ca-path=/etc/ssl/certs
      --without-brotli --without-zstd --without-libpsl --without-libidn2 --without-nghttp2 --without-librtmp --without-libssh2
      --without-gssapi --without-libgsasl --disable-ldap --disable-ldaps --disable-rtsp --disable-dict --disable-telnet --disable-tftp
      --disable-pop3 --disable-imap --disable-smb --disable-smtp --disable-gopher --disable-mqtt --disable-ftp --disable-file
      --disable-manual --disable-ntlm --disable-ntlm-wb --disable-netrc --disable-libcurl-option --disable-alt-svc --disable-doh
      --disable-mime --disable-unix-sockets)
    built=lib/.libs/libcurl.so.4 ;;
  libxml2)
    # The HTML and XML parsers with iconv (glibc's) for encodings; no network access of its
    # own (HTTP, FTP), catalogs, modules or legacy interfaces.
    features=(--without-icu --without-lzma --without-zlib --without-python --without-readline --without-http --without-ftp
      --without-debug --without-docbook --without-legacy --without-modules --without-catalog)
    built=.libs/libxml2.so.2 ;;
  *) echo "usage: $0 curl|libxml2 OUTPUT BUILD-FOLDER" >&2; exit 2 ;;
esac

apt_options=(-o Dir::Etc::SourceList=/dev/null -o Dir::Etc::SourceParts="$sources/sources"
  -o Dir::State::Lists="$sources/lists" -o Dir::Cache="$sources/cache"
  -o Debug::NoLocking=true -o APT::Sandbox::User="$(id -un)")
rm -rf "$sources"
mkdir -p "$sources/sources" "$sources/lists/partial" "$sources/cache"
for list in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
  [ -f "$list" ] && sed -n 's/^deb /deb-src /p' "$list" >> "$sources/sources/source.list"
done
for list in /etc/apt/sources.list.d/*.sources; do
  [ -f "$list" ] && sed 's/^Types:.*/Types: deb-src/' "$list" > "$sources/sources/$(basename "$list")"
done
echo "Building $package from Debian's source package (once; see tools/private-libraries.sh)"
cd "$sources"
{ apt-get "${apt_options[@]}" update -qq && apt-get "${apt_options[@]}" source --download-only -qq "$package" >/dev/null; } || {
  echo "Cannot fetch Debian's source of $package (apt-get source $package, with the machine's apt sources read as deb-src):"
  echo "check that apt reaches its mirrors, then run make again (docs/ARCHITECTURE.md, \"The project's libcurl and libxml2\")."
  exit 1; }
dpkg-source --no-check -x "$package"_*.dsc "$package" >/dev/null
cd "$package"
if [ "$package" = libxml2 ]; then
  # Debian's patches change libxml2's Makefile.am: the files made from it are made newer, so
  # make does not remake them with automake, which the build does not need.
  touch aclocal.m4 && sleep 1 && touch configure config.h.in $(find . -name Makefile.in)
fi
./configure --quiet --disable-dependency-tracking --enable-shared --disable-static "${features[@]}" >/dev/null
# The compilers' output is shown only when a build fails (libxml2's has warnings).
target=(-C lib); [ "$package" = libxml2 ] && target=(libxml2.la)
make --quiet "${target[@]}" > build.log 2>&1 || { cat build.log; exit 1; }
mkdir -p "$(dirname "$output")"
objcopy --strip-debug "$sources/$package/$built" "$output"
rm -rf "$sources"
