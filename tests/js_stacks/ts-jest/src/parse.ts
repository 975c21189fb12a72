export interface Pair {
  key: string;
  value: string;
}

export default function parse(line: string): Pair {
  const [key, value] = line.split('=');
  return { key: key.trim(), value: value.trim() };
}
