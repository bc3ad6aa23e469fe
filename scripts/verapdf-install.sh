#!/usr/bin/env bash
# veraPDF (GPLv3+/MPLv2+, Maven Central: org.verapdf.apps:greenfield-apps), the PDF Association's
# validator for PDF/A and PDF/UA: the tests check every PDF that claims a standard with it
# (test/support/verapdf.ts). Its jars are fetched once into ~/.cache (scripts/maven-fetch.sh).
set -euo pipefail
version="${VERAPDF_VERSION:-1.28.2}"
exec bash "$(dirname "$0")/maven-fetch.sh" verapdf "$version" "org.verapdf.apps:greenfield-apps:$version"
