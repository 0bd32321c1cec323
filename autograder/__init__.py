"""The instructor's grading pipeline on nbgrader: `python -m autograder release|collect|grade|feedback|export|report`."""
__version__ = "0.1.0"
