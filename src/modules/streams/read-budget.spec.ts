import { entrySize, RawEntry, READ_CHUNK, ReadBudget } from 'src/modules/streams/read-budget';

const entry = (id: number, bytes: number): RawEntry => [`${id}-0`, ['data', 'x'.repeat(bytes - 4)]];

describe('ReadBudget', () => {
  it('counts the field names and values of an entry, nothing for a deleted one', () => {
    expect(entrySize(entry(1, 100))).toBe(100);
    expect(entrySize(['1-0', null])).toBe(0);
  });

  it('admits entries until the byte budget is reached: the entry that reaches it is the last', () => {
    const budget = new ReadBudget(100, 1000, 0);
    const read = [300, 300, 300, 300, 300].map((bytes, i) => entry(i, bytes));
    expect(budget.take(read)).toEqual(read.slice(0, 4));
    expect([budget.bytes, budget.full]).toEqual([1200, true]);
    expect(budget.take([entry(9, 10)])).toEqual([]);
  });

  it('admits one entry larger than the whole budget, alone', () => {
    const budget = new ReadBudget(100, 1000, 0);
    expect(budget.take([entry(1, 5000), entry(2, 10)])).toHaveLength(1);
    expect(budget.full).toBe(true);
  });

  it('stops at the entry limit whatever the bytes', () => {
    const budget = new ReadBudget(2, 1_000_000, 0);
    expect(budget.take([entry(1, 10), entry(2, 10), entry(3, 10)])).toHaveLength(2);
    expect(budget.full).toBe(true);
  });

  it('asks for as many entries as fit in the bytes left at the largest size seen, between 1 and READ_CHUNK', () => {
    const budget = new ReadBudget(50_000, 10_000, 0);
    expect(budget.nextCount()).toBe(READ_CHUNK);
    budget.take([entry(1, 1000)]);
    expect(budget.nextCount()).toBe(9);
    budget.take([entry(2, 8500)]);
    expect(budget.nextCount()).toBe(1);
    expect(new ReadBudget(3, 10_000, 0).nextCount()).toBe(3);
  });

  it("plans the first read for the previous pass's largest entry and measures this pass's own", () => {
    const budget = new ReadBudget(50_000, 10_000, 2000);
    expect(budget.nextCount()).toBe(5);
    budget.take([entry(1, 100)]);
    expect(budget.largest).toBe(100);
    expect(budget.nextCount()).toBe(4);
  });
});
