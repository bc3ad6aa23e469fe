'use strict';

/**
 * Runs `fn` repeatedly: a warm-up, then rounds of at least `seconds`, and reports the median
 * round. Returns documents per second, milliseconds per call, and the size of the last output.
 */
async function measure(label, fn, { seconds = 2, rounds = 3 } = {}) {
  let size = 0;
  const warm = Date.now();
  while (Date.now() - warm < 500) size = (await fn()).length;
  const rates = [];
  for (let r = 0; r < rounds; r++) {
    let n = 0;
    const start = process.hrtime.bigint();
    let elapsed = 0;
    while (elapsed < seconds * 1e9) {
      size = (await fn()).length;
      n++;
      elapsed = Number(process.hrtime.bigint() - start);
    }
    rates.push(n / (elapsed / 1e9));
    process.stderr.write(`  ${label}: round ${r + 1}/${rounds}, ${rates[r].toFixed(1)}/s\n`);
  }
  rates.sort((a, b) => a - b);
  const rate = rates[Math.floor(rates.length / 2)];
  return { rate, ms: 1000 / rate, size };
}

module.exports = { measure };
