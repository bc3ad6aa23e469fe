/**
 * The gate in front of the render threads and Chromium's pages: at most `size` at once, the rest
 * served in the order they came — a caller arriving just as a slot is given back does not take it
 * from one already waiting.
 */
import { Slots } from '../../src/templates/slots';

describe('Slots', () => {
  it('lets in at most size at once, then the waiters first come, first served, ahead of later callers', async () => {
    const slots = new Slots(() => 2);
    const got: string[] = [];
    const enter = (name: string) => slots.take().then(() => void got.push(name));
    await Promise.all([enter('a'), enter('b')]);
    const waiting = [enter('c'), enter('d')];
    await Promise.resolve();
    expect(got).toEqual(['a', 'b']);
    slots.release();
    // arrives after the release, before the waiter it woke has run
    const late = enter('e');
    slots.release();
    slots.release();
    await Promise.all([...waiting, late]);
    expect(got).toEqual(['a', 'b', 'c', 'd', 'e']);
  });

  it('frees a slot when nobody waits', async () => {
    const slots = new Slots(() => 1);
    await slots.take();
    slots.release();
    let entered = false;
    await slots.take().then(() => (entered = true));
    expect(entered).toBe(true);
  });
});
