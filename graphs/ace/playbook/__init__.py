"""The playbook as data: bullet ids, a dataset's sections, the ACE text format, the store on disk, import/export."""
