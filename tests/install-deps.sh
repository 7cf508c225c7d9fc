#!/bin/sh
# Installs the Debian packages named as arguments that are not installed yet.
missing=""
for p in "$@"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
	echo "memtrace: missing Debian packages:$missing (run as root, or: sudo apt-get install$missing)" >&2
	exit 1
fi
echo "memtrace: installing$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq && apt-get install -y -qq $missing >/dev/null
