"""The instructor's grading pipeline on nbgrader: `python -m autograder release|collect|grade|feedback|export|report`."""
#: part of every submission's fingerprint and the preflight's key: raised when what grading stores
#: changes (0.1.1: flags and rules kept as ids beside their messages, autograder.integrity.flags), so that
#: the next `grade` regrades what an older grader left
__version__ = "0.1.1"
