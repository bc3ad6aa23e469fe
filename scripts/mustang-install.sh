#!/usr/bin/env bash
# Mustang's validator (Apache-2.0, Maven Central: org.mustangproject:validator), which checks a
# Factur-X / ZUGFeRD invoice the way the e-invoicing world does: the PDF/A-3 file, its XMP
# properties, and the embedded XML against the schema and the EN 16931 business rules (schematron).
# test/support/facturx.ts runs it on the Factur-X example. Its jars and their dependencies are
# fetched by Maven into ~/.cache, so a machine fetches them once; `.complete` is written last, so a
# broken fetch is redone.
set -euo pipefail
version="${MUSTANG_VERSION:-2.25.0}"
dir="$HOME/.cache/paperlink-mustang/$version"
if [ -f "$dir/.complete" ]; then
  echo "Mustang validator $version: $dir (cached)"
  exit 0
fi
rm -rf "$dir"
mkdir -p "$dir"
cat > "$dir/pom.xml" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>paperlink</groupId>
  <artifactId>mustang-runtime</artifactId>
  <version>1</version>
  <dependencies>
    <dependency><groupId>org.mustangproject</groupId><artifactId>validator</artifactId><version>$version</version></dependency>
  </dependencies>
</project>
POM
mvn -q -B -f "$dir/pom.xml" dependency:copy-dependencies -DoutputDirectory="$dir/lib"
echo "Mustang validator $version: $(ls "$dir/lib" | wc -l) jars in $dir/lib"
touch "$dir/.complete"
