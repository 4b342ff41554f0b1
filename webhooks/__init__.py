"""placement-webhooks: Kubernetes admission webhooks for where pods may run.

One name per concept, in every package:

- **live**: a cluster read through the API as a command's input (``cli/live.py``);
- **source**: a manifest input as read, a file or stdin (``manifests.reader.Source``);
  where objects are listed from is an ``ObjectLister``, where API credentials come from
  a ``ClusterSource``;
- **render**: a module or function that turns a report into text for people or tools
  (``dryrun/render.py``, ``dryrun/policytest_render.py``, ``audit/render.py``,
  ``explain/render.py``);
- **report**: the dry run's findings (``dryrun/report.py``); the audit's merged findings
  are its **results** (``audit/results.py``);
- **policytest**: the declarative policy tests, whatever the command is called
  (``placement-webhooks test``);
- **load** a config: build it from data (``core.config.load_config``); **read** it: from a
  file (``configfile.read_config``; the CLI's ``read_config_or_exit``). gunicorn's
  ``load_config`` hook in ``server/runner.py`` keeps the framework's name;
- **admit**: run the chain over one object offline (``Engine.admit``, ``dryrun.run.admit``);
  **decide**: the core's verdict on a parsed request (``Admission.decide``); **handle**:
  the same for AdmissionReview bytes (``Admission.handle``).
"""

__version__ = "0.1.0"
