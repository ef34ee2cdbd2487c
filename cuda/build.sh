#!/bin/sh
# cuda/build.sh: build cuda/build/libcraftax_cuda.so (same as `make -C cuda`).
set -e
cd "$(dirname "$0")"
exec make "$@"
