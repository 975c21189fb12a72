"""What a run leaves behind: its output folder (report.json, trace.jsonl, fix.patch...), the
typed report, and the trace's header (the tree hash, how it was asked). Every reader and
writer of a run's folder goes through here; publishing, replay, the page and the eval may all
import it (it imports no model, loop, run or command line)."""
