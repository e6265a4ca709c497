/**
 * How long the fault scenarios run: CI's short form by default (the suite within 6 minutes),
 * the lengths issue 24 names with AX_FAULTS_FULL=1 (`npm run test:faults:full`, docs/testing.md).
 */
export const FULL = process.env.AX_FAULTS_FULL === '1';

/** `short` ms in the default run, `full` ms with AX_FAULTS_FULL=1. */
export const len = (short: number, full: number): number => (FULL ? full : short);
