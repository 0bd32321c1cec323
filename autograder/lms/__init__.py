"""Grades back to the LMS (`python -m autograder export --lms`, issue 35).

* config: the LMS registration the tool needs (lms.json: client id, token URL, the tool's key);
* roster: who is who in the LMS, from the hub's record of LTI launches (course_hub.lti);
* rules: the scoring rule (late penalty applied or not, flagged submissions held back or posted
  with a comment, what is never posted) turning the gradebook into one decision per student;
* ags: LTI Advantage Assignment and Grade Services over pylti1p3 (token, line items, scores);
* post: the run: decide, check the token and its scopes, find or create each line item, post
  what changed, report per student;
* gradebook_csv: the LMS's own gradebook import CSV (Canvas, Moodle), for an LMS without AGS.
"""
