const { src, dest } = require('gulp');

/** Copies node and credential icons (and the nodes' codex files) next to the compiled files, where n8n looks for them. */
function buildIcons() {
  return src(['nodes/**/*.{png,svg}', 'nodes/**/*.node.json', 'credentials/**/*.{png,svg}'], { base: '.', encoding: false, allowEmpty: true }).pipe(
    dest('dist'),
  );
}

exports['build:icons'] = buildIcons;
