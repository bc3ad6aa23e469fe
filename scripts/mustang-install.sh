#!/usr/bin/env bash
# Mustang's validator (Apache-2.0, Maven Central: org.mustangproject:validator), which checks a
# Factur-X / ZUGFeRD invoice the way the e-invoicing world does: the PDF/A-3 file, its XMP
# properties, and the embedded XML against the schema and the EN 16931 business rules (schematron).
# test/support/facturx.ts runs it. Its jars are fetched once into ~/.cache (scripts/maven-fetch.sh).
# (Mustang-CLI 2.26.0 is on Maven Central but its core 2.26.0 is not; the validator 2.25.0 resolves.)
set -euo pipefail
version="${MUSTANG_VERSION:-2.25.0}"
exec bash "$(dirname "$0")/maven-fetch.sh" mustang "$version" "org.mustangproject:validator:$version"
