#!/usr/bin/env bash
# Production build: installs the build dependencies, builds cueline in release mode with the Swift runtime linked
# statically, and installs it under PREFIX (default /usr/local): PREFIX/bin/cueline and
# PREFIX/share/cueline/Migrations. deploy/Dockerfile runs exactly this.
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"
cd "$(repo_root)"
prefix=${1:-/usr/local}
ensure_build_deps
# Linking the Swift runtime statically pulls in FoundationNetworking, which links libcurl.
apt_install libcurl4-openssl-dev
swift build -c release --product cueline --static-swift-stdlib
bin=$(swift build -c release --show-bin-path)
install -D -m 0755 "$bin/cueline" "$prefix/bin/cueline"
install -d "$prefix/share/cueline/Migrations"
install -m 0644 Migrations/*.sql "$prefix/share/cueline/Migrations/"
install -d "$prefix/share/cueline/console" && install -m 0644 Sources/API/Console/* "$prefix/share/cueline/console/"  # /console
log "installed $prefix/bin/cueline and $prefix/share/cueline/Migrations"
