/**
 * The memory of a program that prints templates (Chromium, LibreOffice) with every process it
 * started, read from /proc: what one document may make such a program hold is bounded by
 * stopping it (RENDER_PROCESS_MEMORY_MB). Where there is no /proc (not Linux), nothing is measured.
 */
import fs from 'node:fs';

const PAGE = 4096;

/**
 * A process's memory in bytes: the anonymous and shared memory it has resident (RssAnon +
 * RssShmem: its heaps and the memory it shares with its other processes), not the program files
 * it maps, which documents do not make it hold. Read from /proc/<pid>/status, which the kernel
 * answers from counters: a browser's ten processes cost well under a millisecond, where their
 * proportional shares (smaps_rollup) cost several, walking every page table. Where status lacks
 * the fields (an older kernel), what is resident.
 */
function memoryOf(pid: number): number {
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, 'latin1');
    const anon = /^RssAnon:\s+(\d+) kB/m.exec(status);
    const shmem = /^RssShmem:\s+(\d+) kB/m.exec(status);
    if (anon && shmem) return (Number(anon[1]) + Number(shmem[1])) * 1024;
  } catch {
    return 0; // it ended meanwhile
  }
  try {
    return Number(fs.readFileSync(`/proc/${pid}/statm`, 'latin1').split(' ')[1]) * PAGE;
  } catch {
    return 0;
  }
}

/** The processes started by `pid` (by any of its threads: LibreOffice's launcher starts it from a thread of its own). */
function childrenOf(pid: number): number[] {
  const kids: number[] = [];
  let tasks: string[];
  try {
    tasks = fs.readdirSync(`/proc/${pid}/task`);
  } catch {
    return kids; // it ended meanwhile, or there is no /proc
  }
  for (const task of tasks) {
    try {
      for (const kid of fs.readFileSync(`/proc/${pid}/task/${task}/children`, 'latin1').split(' '))
        if (kid.trim()) kids.push(Number(kid));
    } catch {
      // the thread ended meanwhile
    }
  }
  return kids;
}

/**
 * A process and every process under it, found by walking down from `root` (a few files per process
 * of it), not by reading every process of the machine. Empty where there is no /proc.
 */
export function processTree(root: number): number[] {
  const tree: number[] = [];
  const stack = [root];
  const seen = new Set<number>();
  while (stack.length) {
    const pid = stack.pop()!;
    if (seen.has(pid)) continue;
    seen.add(pid);
    tree.push(pid);
    stack.push(...childrenOf(pid));
  }
  return tree;
}

/** The memory of a process and of every process under it, in bytes (0 where /proc is not). */
export function treeMemory(root: number): number {
  return processTree(root).reduce((total, pid) => total + memoryOf(pid), 0);
}

/** The processes directly under this one whose command line holds `marker`. */
export function childrenWith(marker: string, parent = process.pid): number[] {
  return childrenOf(parent).filter((pid) => {
    try {
      return fs.readFileSync(`/proc/${pid}/cmdline`, 'latin1').includes(marker);
    } catch {
      return false;
    }
  });
}

/**
 * Checks the tree under `root` every `everyMs` while a document prints, and calls `over` once when
 * it holds more than `limitBytes`. Returns the function that stops watching.
 */
export function watchMemory(root: number, limitBytes: number, over: () => void, everyMs = 100): () => void {
  const timer = setInterval(() => {
    if (treeMemory(root) <= limitBytes) return;
    clearInterval(timer);
    over();
  }, everyMs);
  timer.unref();
  return () => clearInterval(timer);
}
