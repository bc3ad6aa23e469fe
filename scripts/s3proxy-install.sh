#!/usr/bin/env bash
# s3proxy (Apache-2.0, Maven Central: org.gaul:s3proxy), a real S3-compatible server over files on
# disk: the tests store documents in it (STORAGE=s3; scripts/s3proxy.js starts it). Its jars and
# their dependencies are fetched by Maven into ~/.cache, so a machine fetches them once; `.complete`
# is written last, so a broken fetch is redone.
set -euo pipefail
version="${S3PROXY_VERSION:-4.1.0}"
dir="$HOME/.cache/paperlink-s3proxy/$version"
if [ -f "$dir/.complete" ]; then
  echo "s3proxy $version: $dir (cached)"
  exit 0
fi
rm -rf "$dir"
mkdir -p "$dir"
# s3proxy 4.1.0 uses Jackson 3, whose databind needs jackson-annotations 2.20 or later; Maven's
# nearest-wins picks 2.18 from jclouds, so the newer one is named here
cat > "$dir/pom.xml" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>paperlink</groupId>
  <artifactId>s3proxy-runtime</artifactId>
  <version>1</version>
  <dependencies>
    <dependency><groupId>org.gaul</groupId><artifactId>s3proxy</artifactId><version>$version</version></dependency>
    <dependency><groupId>com.fasterxml.jackson.core</groupId><artifactId>jackson-annotations</artifactId><version>2.22</version></dependency>
  </dependencies>
</project>
POM
mvn -q -B -f "$dir/pom.xml" dependency:copy-dependencies -DoutputDirectory="$dir/lib"
echo "s3proxy $version: $(ls "$dir/lib" | wc -l) jars in $dir/lib"
touch "$dir/.complete"
