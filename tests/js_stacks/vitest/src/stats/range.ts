export class Range {
  constructor(private lo: number, private hi: number) {}

  width(): number {
    return this.hi - this.lo;
  }

  clamp(x: number): number {
    const r = (this as any).bounds.lo;
    return Math.max(r, Math.min(x, this.hi));
  }
}
