import {useState} from 'react';
import {ErrorAlert} from '../components/ErrorAlert';
import {SelectField} from '../components/Field';
import {num, rate} from '../format';
import {usePoll} from '../poll';
import {useApp} from '../session';
import type {WorkersReport} from '../types';
import {WorkerTable} from './WorkerTable';

const SEEN = [
  {value: '1h', label: 'the last hour'},
  {value: '1d', label: 'the last day'},
  {value: 'all', label: 'ever'},
];

/** The worker registry: live ones, and stale or stopped ones seen within a window (or all). Polls every 2 s. */
export function Workers() {
  const {api} = useApp();
  const [seen, setSeen] = useState('1h');
  const {data, error} = usePoll(() => api.get<WorkersReport>('/workers', seen === 'all' ? {all: true} : {since: seen}), 2000, [api, seen]);
  const workers = (data?.workers ?? []).map((w) => ({...w, types: Object.keys(w.types)}));
  return (
    <>
      <h1>Workers</h1>
      <ErrorAlert error={error} />
      <div className="toolbar">
        <SelectField label="Stopped and stale workers seen within" value={seen} onChange={setSeen} options={SEEN} className="inline" />
        {data && (
          <span>
            <strong>{num(data.counts.live)}</strong> live, {num(data.counts.stale)} stale, {num(data.counts.stopped)} stopped ·{' '}
            {rate(data.rate)} in all
          </span>
        )}
      </div>
      {data && <WorkerTable workers={workers} label="Workers" />}
    </>
  );
}
