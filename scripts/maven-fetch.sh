#!/usr/bin/env bash
# Fetches Java artifacts and their dependencies from Maven Central into
# ~/.cache/paperlink-<name>/<version>/lib, once: `.complete` is written last, so a broken fetch is
# redone. Usage: maven-fetch.sh <name> <version> <groupId:artifactId:version>…
# (scripts/s3proxy-install.sh, verapdf-install.sh and mustang-install.sh use it).
set -euo pipefail
name="$1" version="$2"
shift 2
dir="$HOME/.cache/paperlink-$name/$version"
if [ -f "$dir/.complete" ]; then
  echo "$name $version: $dir (cached)"
  exit 0
fi
rm -rf "$dir"
mkdir -p "$dir"
{
  echo '<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>'
  echo "<groupId>paperlink</groupId><artifactId>$name-runtime</artifactId><version>1</version><dependencies>"
  for coordinates in "$@"; do
    IFS=: read -r group artifact v <<< "$coordinates"
    echo "<dependency><groupId>$group</groupId><artifactId>$artifact</artifactId><version>$v</version></dependency>"
  done
  echo '</dependencies></project>'
} > "$dir/pom.xml"
mvn -q -B -f "$dir/pom.xml" dependency:copy-dependencies -DoutputDirectory="$dir/lib"
echo "$name $version: $(ls "$dir/lib" | wc -l) jars in $dir/lib"
touch "$dir/.complete"
