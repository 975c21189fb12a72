export const sum = (xs: number[]): number => xs.reduce((a, b) => a + b, 0);
