"""Build-time tools, run from a checkout (`PYTHONPATH=.`): the findings catalogue pages (catalogue.py,
findings_doc.py), the message extractors babel.cfg names (extract.py) and click's words marked for them
(click_messages.py), and the checks of the tree (import_cycles.py, message_coverage.py). Nothing in the
cudadoctor package imports them."""
