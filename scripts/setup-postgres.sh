#!/usr/bin/env bash
# Installs Debian's PostgreSQL server binaries (initdb, pg_ctl) where missing, for the tests that
# start their own temporary cluster (tests/integration/support/postgres.rs). No cluster is created
# and no service is started: the package's own "main" cluster is turned off before install.
set -euo pipefail
if ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "setup-postgres: initdb is missing; install Debian's postgresql package (as root)" >&2
  exit 1
fi
mkdir -p /etc/postgresql-common/createcluster.d
echo "create_main_cluster = false" > /etc/postgresql-common/createcluster.d/mcpprobe-tests.conf
# No service starts during the install (a container has no init to start it anyway).
policy=/usr/sbin/policy-rc.d
cleanup=false
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' > "$policy"
  chmod +x "$policy"
  cleanup=true
fi
export DEBIAN_FRONTEND=noninteractive
(apt-get install -y -qq postgresql || { apt-get update -qq && apt-get install -y -qq postgresql; }) >/dev/null
if $cleanup; then rm -f "$policy"; fi
ls /usr/lib/postgresql/*/bin/initdb >/dev/null
