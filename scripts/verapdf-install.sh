#!/usr/bin/env bash
# veraPDF (GPLv3+/MPLv2+, Maven Central: org.verapdf.apps:greenfield-apps), the PDF Association's
# validator for PDF/A and PDF/UA: the tests check every PDF that claims a standard with it
# (test/support/verapdf.ts; scripts/verapdf.sh runs it). Its jars and their dependencies are
# fetched by Maven into ~/.cache, so a machine fetches them once; `.complete` is written last, so a
# broken fetch is redone.
set -euo pipefail
version="${VERAPDF_VERSION:-1.28.2}"
dir="$HOME/.cache/paperlink-verapdf/$version"
if [ -f "$dir/.complete" ]; then
  echo "veraPDF $version: $dir (cached)"
  exit 0
fi
rm -rf "$dir"
mkdir -p "$dir"
cat > "$dir/pom.xml" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>paperlink</groupId>
  <artifactId>verapdf-runtime</artifactId>
  <version>1</version>
  <dependencies>
    <dependency><groupId>org.verapdf.apps</groupId><artifactId>greenfield-apps</artifactId><version>$version</version></dependency>
  </dependencies>
</project>
POM
mvn -q -B -f "$dir/pom.xml" dependency:copy-dependencies -DoutputDirectory="$dir/lib"
echo "veraPDF $version: $(ls "$dir/lib" | wc -l) jars in $dir/lib"
touch "$dir/.complete"
