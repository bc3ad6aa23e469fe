#!/usr/bin/env bash
# s3proxy (Apache-2.0, Maven Central: org.gaul:s3proxy), a real S3-compatible server over files on
# disk: the tests store documents in it (STORAGE=s3; scripts/s3proxy.js starts it). Its jars are
# fetched once into ~/.cache (scripts/maven-fetch.sh).
# s3proxy 4.1.0 uses Jackson 3, whose databind needs jackson-annotations 2.20 or later; Maven's
# nearest-wins picks 2.18 from jclouds, so the newer one is named here.
set -euo pipefail
version="${S3PROXY_VERSION:-4.1.0}"
exec bash "$(dirname "$0")/maven-fetch.sh" s3proxy "$version" \
  "org.gaul:s3proxy:$version" com.fasterxml.jackson.core:jackson-annotations:2.22
