export { mean } from './mean';
export { Range } from './range';
