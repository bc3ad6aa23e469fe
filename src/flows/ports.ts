/**
 * What a flow may do, and nothing else: call activities (all I/O), read the time, sleep, and wait
 * for a signal with a timeout. The embedded runner and the Temporal adapter each implement it.
 * Flows are bundled into Temporal's workflow sandbox: no Node built-ins, no Date.now(), no I/O here.
 */
export interface Ports<A> {
  activities: A;
  /** Milliseconds since the epoch, from the engine's clock. */
  now(): number;
  sleep(ms: number): Promise<void>;
  /** Resolves true as soon as `test()` is true after a signal, or false when `timeoutMs` passes (never, when undefined). */
  condition(test: () => boolean, timeoutMs?: number): Promise<boolean>;
  /** Registers what a signal does; `condition` re-tests after every signal. */
  onSignal(name: string, handler: () => void): void;
  /**
   * Whether this run takes the branch added by change `id` (Temporal's `patched()`): false only when
   * replaying a run that was recorded before the change. Every change to what a flow does (its
   * activities, timers and their order) goes behind one, so running workflows replay as recorded.
   */
  patched(id: string): boolean;
  /**
   * Whether the run should end here and go on as a new run with the same input (Temporal's
   * continue-as-new, when the server suggests it because the history grew long). Always false
   * in the embedded engine, which keeps no history.
   */
  continueAsNewSuggested(): boolean;
}
