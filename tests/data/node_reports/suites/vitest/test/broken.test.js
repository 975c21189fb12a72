import { test } from 'vitest'
import pad from 'left-pad-not-installed'
test('never runs', () => { pad() })
